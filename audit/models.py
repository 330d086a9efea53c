"""The audit app declares no models yet."""
