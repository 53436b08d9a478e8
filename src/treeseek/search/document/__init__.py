"""The document retriever: sections of document trees (flat, collapsed-tree, Beam/Block)."""
