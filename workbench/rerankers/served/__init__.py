"""The reranker kinds served elsewhere and reached over HTTP: rerank APIs and hosted providers (`remote`), vLLM's
`/score` for causal LMs (`served_causal`), and the chat endpoints' pointwise and listwise kinds
(`chat_endpoint`, `chat_pointwise`, `listwise`), with what the hosted ones cost (`pricing`)."""
