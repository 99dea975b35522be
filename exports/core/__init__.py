"""The pure core: task model, states, transitions and policies. No boto3, no environment, no clock."""
