"""Where pair scores are kept: the in-process score and token caches (`cache`) and the store that lasts across
runs and processes (`score_store`)."""
