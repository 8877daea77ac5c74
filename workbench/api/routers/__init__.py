"""The API's routers, one per area: health, search (search and retrieve), rerank, collections, session memory, docs."""
