"""The API's routers, one per area: health, search (search and retrieve), collections, session memory, docs."""
