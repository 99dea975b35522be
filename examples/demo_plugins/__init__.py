"""Python plugin export types on the demo DynamoDB tables (docs/export-types.md): ``orders``,
``customers`` and ``sales_report`` written as code rather than declared. The test suite's
``tests/declarations/dynamodb_demo.toml`` serves them; the service ships only declared types."""
