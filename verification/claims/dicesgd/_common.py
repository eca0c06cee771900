"""Shared constants of the DiceSGD claim modules."""

PAPER = "dicesgd"
