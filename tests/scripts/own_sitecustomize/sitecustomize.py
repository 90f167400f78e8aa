MARKER = "the target's own sitecustomize ran"
