"""Airflow glue for the migration pipeline: hooks, operators, sensors and triggers over mirror_engine.

This folder is Airflow's plugins folder content, so it is on sys.path in every Airflow component
(scheduler, workers, triggerer), which triggers need.
"""
