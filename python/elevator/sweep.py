def sweep(*args, **kwargs):  # placeholder: python/elevator/sweep.py is the ray helper's
    raise NotImplementedError("elevator.sweep is not built yet")
