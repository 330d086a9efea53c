"""Audit use cases: the answering trail, the mutation trail, and their retention."""
