"""The audit trail and usage per tenant (docs/audit.md): every export, link, download, delivery
and schedule change, chained by hash per tenant and day, kept for the deployment's retention.

Pure modules (no boto3, no environment, no clock of their own): :mod:`.model` (the records,
their chain and its verdict), :mod:`.events` (what a task's write or an API action records) and
:mod:`.tenancy` (tenants, admins, quotas and retention; ``load_tenancy`` reads them from the
declaration's ``[tenants]``).
The service (:mod:`.service`) works through the port of :mod:`.ports`; its DynamoDB adapter is
:mod:`exports.audit.dynamodb_audit`.
"""
