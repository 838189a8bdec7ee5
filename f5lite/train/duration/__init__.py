"""Training the duration predictor (`f5lite.models.duration`): how many frames a text takes to say.

- `training`: the predictor's optimizer and update when it trains alongside the flow model
  (`duration.train=alongside`, `DurationTraining`), its held-out errors, and the helpers both objectives share;
- `predictor`: what the two predictor objectives share (the network, the start, the held-out errors);
- `alone`: `objective=duration`, the predictor alone on text, lengths and speakers;
- `grpo`: `objective=duration_grpo`, the predictor by RL: the lengths it picks rewarded by what is said in them.
"""

from f5lite.train.duration.training import DurationTraining, load_duration_cases, validation_errors

__all__ = ["DurationTraining", "load_duration_cases", "validation_errors"]
