"""Export types: what can be exported, how it is filtered, and where its rows come from."""
