"""The migration cockpit inside the Airflow UI: a FastAPI app (`app.py`) and its pages (`pages.py`)."""
