"""The one tree-sitter query per language family: every node any layer extractor needs.

Capture names: ``def.class`` / ``def.function`` / ``def.const`` / ``def.container`` (a node that
qualifies the names inside it but is no symbol itself, e.g. a Rust ``impl``), ``call``,
``callee`` (Python: the function part of a call, its parent is the call), ``attr``
(Python: ``self.x = Foo()``, ``self.x: Foo``, class-level ``x: Foo``), ``import``,
``assign`` (module-level assignments, for entrypoints) and ``package``.
"""

from __future__ import annotations

PYTHON = """
(function_definition) @def.function
(class_definition) @def.class
(module (assignment left: (identifier) @def.const))
(module [(assignment) (augmented_assignment)] @assign)
(call function: (_) @callee)
(assignment left: (attribute object: (identifier) attribute: (identifier)) right: (call)) @attr
(assignment left: (attribute object: (identifier) attribute: (identifier)) type: (type)) @attr
(class_definition body: (block (assignment left: (identifier) type: (type)) @attr))
(import_statement) @import
(import_from_statement) @import
"""

JAVASCRIPT = """
(function_declaration) @def.function
(generator_function_declaration) @def.function
(class_declaration) @def.class
(class) @def.class
(method_definition) @def.function
(variable_declarator value: [(arrow_function) (function_expression)]) @def.function
(export_statement value: [(arrow_function) (function_expression)] @def.function)
(program (expression_statement (assignment_expression
  left: (member_expression property: (property_identifier))
  right: [(arrow_function) (function_expression)]) @def.function))
(variable_declarator value: (object
  (pair key: (property_identifier) value: [(arrow_function) (function_expression)]) @def.function))
(variable_declarator name: (identifier) value: (object)) @def.container
(program (lexical_declaration (variable_declarator name: (identifier) @def.const)))
(program (export_statement
  (lexical_declaration (variable_declarator name: (identifier) @def.const))))
(call_expression) @call
(new_expression) @call
(import_statement) @import
(export_statement source: (_)) @import
"""

_JS_ONLY = """
(field_definition value: [(arrow_function) (function_expression)]) @def.function
"""

TYPESCRIPT = (
    JAVASCRIPT
    + """
(public_field_definition value: [(arrow_function) (function_expression)]) @def.function
(abstract_class_declaration) @def.class
(interface_declaration) @def.class
(enum_declaration) @def.class
(type_alias_declaration) @def.class
(function_signature) @def.function
(abstract_method_signature) @def.function
(internal_module body: (_)) @def.container
"""
)

GO = """
(function_declaration) @def.function
(method_declaration) @def.function
(type_spec) @def.class
(source_file (const_declaration (const_spec name: (identifier) @def.const)))
(call_expression) @call
(import_spec) @import
(package_clause) @package
"""

RUST = """
(function_item) @def.function
(function_signature_item) @def.function
(struct_item) @def.class
(enum_item) @def.class
(trait_item) @def.class
(union_item) @def.class
(impl_item) @def.container
(mod_item body: (_)) @def.container
(const_item) @def.const
(static_item) @def.const
(call_expression) @call
(use_declaration) @import
"""

JAVA = """
(class_declaration) @def.class
(interface_declaration) @def.class
(enum_declaration) @def.class
(record_declaration) @def.class
(annotation_type_declaration) @def.class
(method_declaration) @def.function
(constructor_declaration) @def.function
(compact_constructor_declaration) @def.function
(variable_declarator value: (object_creation_expression (class_body))) @def.container
(enum_constant body: (class_body)) @def.container
(method_invocation) @call
(object_creation_expression) @call
(import_declaration) @import
(package_declaration) @package
"""

CSHARP = """
(class_declaration) @def.class
(interface_declaration) @def.class
(struct_declaration) @def.class
(enum_declaration) @def.class
(record_declaration) @def.class
(method_declaration) @def.function
(constructor_declaration) @def.function
(local_function_statement) @def.function
(invocation_expression) @call
(object_creation_expression) @call
(using_directive) @import
(namespace_declaration) @package
(file_scoped_namespace_declaration) @package
"""

C = """
(function_definition) @def.function
(struct_specifier name: (_) body: (_)) @def.class
(union_specifier name: (_) body: (_)) @def.class
(enum_specifier name: (_) body: (_)) @def.class
(type_definition) @def.class
(call_expression) @call
(preproc_include) @import
"""

CPP = """
(function_definition) @def.function
(class_specifier name: (_) body: (_)) @def.class
(struct_specifier name: (_) body: (_)) @def.class
(union_specifier name: (_) body: (_)) @def.class
(enum_specifier name: (_) body: (_)) @def.class
(call_expression) @call
(new_expression) @call
(preproc_include) @import
(using_declaration) @import
"""

RUBY = """
(method) @def.function
(singleton_method) @def.function
(class) @def.class
(module) @def.class
(singleton_class) @def.container
(call) @call
(program (assignment left: (constant) @def.const))
"""

BY_FAMILY: dict[str, str] = {
    "python": PYTHON,
    "javascript": JAVASCRIPT + _JS_ONLY,
    "typescript": TYPESCRIPT,
    "go": GO,
    "rust": RUST,
    "java": JAVA,
    "csharp": CSHARP,
    "c": C,
    "cpp": CPP,
    "ruby": RUBY,
}
