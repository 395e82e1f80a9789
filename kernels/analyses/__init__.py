"""What a run's records are turned into: correctness, coalescing, bank
conflicts, divergence and hazards, occupancy, the diff of two runs, and
findings by line."""
