"""The whole service on one laptop: an embedded AWS (moto server), an HTTP gateway that speaks
API Gateway's HTTP API event format, and a worker loop that feeds SQS batches to the worker."""
