"""Runnable programs: ``python -m gradtape.examples.digits`` is the main job."""
