"""Typed config schemas, Hydra composition with recipes, and the composed-config printer (`python -m f5lite.config`)."""

from f5lite.config.compose import compose_config, config_to_yaml
from f5lite.config.model import MODEL_SCHEMAS, DiTConfig, MMDiTConfig, ModelConfig, UNetTConfig
from f5lite.config.objective import PREDICTOR_ONLY
from f5lite.config.schema import (
    ACConfig,
    CkptConfig,
    DataConfig,
    EMAConfig,
    FinetuneConfig,
    InitConfig,
    LoggerConfig,
    LoraConfig,
    OptimConfig,
    PerfConfig,
    SampleConfig,
    SourceConfig,
    TrainConfig,
)

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
