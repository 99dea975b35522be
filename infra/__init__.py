"""The CDK app of the exports service: one construct per concern, composed by :mod:`infra.stack`."""
