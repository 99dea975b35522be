"""Settings every test shares: no real AWS, quiet Powertools, no X-Ray daemon."""

import os
from pathlib import Path

# Set before any handler module is imported: Powertools reads them when its objects are made.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "exports",
        "POWERTOOLS_METRICS_NAMESPACE": "Exports",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
)
# In-process suites run the demo types as Python plugins on moto's DynamoDB; the PostgreSQL suites
# load the repository's exports.toml themselves.
os.environ["EXPORTS_CONFIG"] = str(Path(__file__).parent / "declarations" / "dynamodb_demo.toml")
# A stray endpoint would send in-process moto tests to a real server.
os.environ.pop("AWS_ENDPOINT_URL", None)
