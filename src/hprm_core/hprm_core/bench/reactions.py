"""Placeholder replaced by the reactions benchmark."""
