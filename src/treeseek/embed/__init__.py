"""Text embedders: installed models only, batched, cached by content hash by their callers."""
