"""A small character-level GPT trained on examples/data/fortunes.txt."""
