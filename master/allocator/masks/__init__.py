"""Eligibility masks of the numpy allocator, one module per rule, each with its reason string."""
