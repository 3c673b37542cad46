"""The five flags: each module turns evidence and judge output into a ``FlagClaim`` with its proof."""
