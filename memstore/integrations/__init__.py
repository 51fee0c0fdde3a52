"""Faces of memstore for agent frameworks; each is a thin skin over `MemoryStore`.

Nothing is imported here: each integration needs its own extra (`memstore.integrations.langgraph`
needs `pip install 'memstore-agents[langgraph]'`), and `import memstore` must not pay for any of them.
"""
