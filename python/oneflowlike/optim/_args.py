"""Constructor argument checks shared by the optimizers, with torch.optim's messages."""

# torch names these two by a phrase; every other hyper-parameter is "Invalid <name> value".
_LABELS = {"lr": "learning rate", "eps": "epsilon value"}


def check_nonnegative(**values):
    """Raises torch's ValueError for the first value (in argument order) not >= 0. Written as
    torch's `not 0.0 <= value`, so NaN is refused too."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_LABELS.get(name, name + ' value')}: {value}")


def check_betas(betas):
    """Raises torch's ValueError unless both betas lie in [0, 1)."""
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_adam_args(lr, betas, eps, weight_decay):
    """The checks of the Adam family (Adam, AdamW, Adamax, NAdam, RAdam), in torch's order."""
    check_nonnegative(lr=lr, eps=eps)
    check_betas(betas)
    check_nonnegative(weight_decay=weight_decay)
