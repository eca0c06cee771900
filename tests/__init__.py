"""dptheory test suite, mirroring the packages (accounting, verification, optim, cli, integrations, api, project)."""
