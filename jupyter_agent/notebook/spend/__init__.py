"""What a session spends: model prices, the budget a turn must stay within, and the usage report."""
