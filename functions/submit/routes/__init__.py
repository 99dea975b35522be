"""The API function's routes, one module per group, each imported on the first request to its paths
(functions/submit/handler.py, ``ROUTE_MODULES``)."""
