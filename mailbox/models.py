"""Models of this app; filled by a later issue."""
