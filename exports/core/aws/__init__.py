"""The AWS adapters every stage uses: the boto3 clients, SDK errors as ours, the tasks table, the
result bucket, the workflows, the lifecycle event bus. Each takes its client and speaks the
service's own types and errors; a feature's own adapters live beside it."""
