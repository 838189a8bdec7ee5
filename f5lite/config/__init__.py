"""Typed config schemas, Hydra composition with recipes, and the composed-config printer (`python -m f5lite.config`)."""

from f5lite.config.ckpt import CkptConfig
from f5lite.config.compose import compose_config, config_to_yaml
from f5lite.config.data import DataConfig, SourceConfig
from f5lite.config.ema import EMAConfig
from f5lite.config.finetune import FinetuneConfig, InitConfig, LoraConfig
from f5lite.config.logger import LoggerConfig
from f5lite.config.model import MODEL_SCHEMAS, DiTConfig, MMDiTConfig, ModelConfig, UNetTConfig
from f5lite.config.objective import PREDICTOR_ONLY
from f5lite.config.optim import OptimConfig
from f5lite.config.perf import ACConfig, PerfConfig
from f5lite.config.sample import SampleConfig
from f5lite.config.train_run import TrainConfig

__all__ = [
    "MODEL_SCHEMAS",
    "PREDICTOR_ONLY",
    "ACConfig",
    "CkptConfig",
    "DataConfig",
    "DiTConfig",
    "EMAConfig",
    "FinetuneConfig",
    "InitConfig",
    "LoggerConfig",
    "LoraConfig",
    "MMDiTConfig",
    "ModelConfig",
    "OptimConfig",
    "PerfConfig",
    "SampleConfig",
    "SourceConfig",
    "TrainConfig",
    "UNetTConfig",
    "compose_config",
    "config_to_yaml",
]
