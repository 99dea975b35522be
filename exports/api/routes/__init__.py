"""The API function's routes, one module per group, each imported on the first request to its paths
(exports/api/app.py, ``ROUTE_MODULES``)."""
