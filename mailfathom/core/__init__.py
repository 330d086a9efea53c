"""The ground floor: rules every layer shares. Nothing here imports an app or an entrypoint."""
