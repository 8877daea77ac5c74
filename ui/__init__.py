"""Streamlit helpers shared by the app's pages: engine resource, sidebar controls, result views, charts."""
