"""Model implementations, keyed by the Hugging Face ``architectures`` name in config.json."""

from formwork.core.models.llama import LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM

MODEL_REGISTRY: dict[str, type[LlamaForCausalLM]] = {
    "LlamaForCausalLM": LlamaForCausalLM,
    "MistralForCausalLM": MistralForCausalLM,
    "Qwen2ForCausalLM": Qwen2ForCausalLM,
}

__all__ = ["MODEL_REGISTRY", "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"]
