"""DynamoDB sources: export types over one partition (or one per day) of a table or index."""
