"""The packaged-function suite: each Lambda package built as the CDK app builds it, run the way
Lambda runs it (runtime.py), against the local stack's embedded AWS (aws_process.py)."""
