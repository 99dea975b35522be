"""A Lambda context object for handlers run in-process."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class LocalLambdaContext:
    """The attributes Powertools and our handlers read from a Lambda context."""

    function_name: str
    timeout_sec: int = 900
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        """An ARN of the same shape as on AWS."""
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        """Always ``$LATEST`` locally."""
        return "$LATEST"

    @property
    def log_group_name(self) -> str:
        """The log group this function would write to."""
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        """A log stream name."""
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the (simulated) timeout."""
        return max(0, int((self.timeout_sec - (time.monotonic() - self._started)) * 1000))
