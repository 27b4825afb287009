"""Exceptions raised by vkformer: one per status code of include/vkformer.h.

Every exception carries the library's own message (``vkf_last_error()``), which names the file,
tensor, token or template line at fault, and the status name (``VKF_ERROR_FORMAT``, ...) in
``status``. They derive from :class:`VkformerError` (a ``RuntimeError``, as llama-cpp-python
raises) and, where Python has a matching built-in, from it as well, so ``except ValueError``
written for llama-cpp-python still catches a prompt that does not fit the context.
"""

from __future__ import annotations


class VkformerError(RuntimeError):
    """A call into the vkformer library failed.

    Attributes:
        status: the status name, e.g. ``"VKF_ERROR_FORMAT"``.
        message: the library's message.
    """

    status: str = "VKF_ERROR"

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(VkformerError, ValueError):
    """A value out of the library's contract (VKF_ERROR_INVALID_ARGUMENT)."""

    status = "VKF_ERROR_INVALID_ARGUMENT"


class FileError(VkformerError, OSError):
    """A file could not be opened, read or mapped (VKF_ERROR_IO)."""

    status = "VKF_ERROR_IO"

    def __init__(self, message: str, status: str | None = None) -> None:
        VkformerError.__init__(self, message, status)

    def __str__(self) -> str:
        return self.message


class FormatError(VkformerError, ValueError):
    """A malformed file: header, offsets, JSON, template syntax (VKF_ERROR_FORMAT)."""

    status = "VKF_ERROR_FORMAT"


class UnsupportedError(VkformerError, NotImplementedError):
    """Valid input this build does not handle: architecture, weight type (VKF_ERROR_UNSUPPORTED)."""

    status = "VKF_ERROR_UNSUPPORTED"


class OutOfMemoryError(VkformerError, MemoryError):
    """A host or device allocation failed (VKF_ERROR_OUT_OF_MEMORY)."""

    status = "VKF_ERROR_OUT_OF_MEMORY"


class NoVulkanError(VkformerError):
    """No Vulkan loader could be loaded (VKF_ERROR_NO_VULKAN)."""

    status = "VKF_ERROR_NO_VULKAN"


class NoDeviceError(VkformerError):
    """No (matching) Vulkan device (VKF_ERROR_NO_DEVICE)."""

    status = "VKF_ERROR_NO_DEVICE"


class VulkanError(VkformerError):
    """A Vulkan call failed; the message names it (VKF_ERROR_VULKAN)."""

    status = "VKF_ERROR_VULKAN"


class ShaderError(VkformerError):
    """A shader failed to compile (VKF_ERROR_SHADER)."""

    status = "VKF_ERROR_SHADER"


class TokenError(VkformerError, ValueError):
    """A token id out of range, or text that cannot be tokenized (VKF_ERROR_TOKEN)."""

    status = "VKF_ERROR_TOKEN"


class ContextFullError(VkformerError, ValueError):
    """The sequence does not fit the context (VKF_ERROR_CONTEXT_FULL)."""

    status = "VKF_ERROR_CONTEXT_FULL"


class ValidationError(VkformerError):
    """The Vulkan validation layer reported a message (VKF_ERROR_VALIDATION)."""

    status = "VKF_ERROR_VALIDATION"


class InternalError(VkformerError):
    """A bug in vkformer, or a numerical failure of the backend (VKF_ERROR_INTERNAL)."""

    status = "VKF_ERROR_INTERNAL"


class AbortedError(VkformerError):
    """A call stopped early by its abort callback (VKF_ERROR_ABORTED)."""

    status = "VKF_ERROR_ABORTED"


# by status name, so a status added to the C enum maps to VkformerError until it is listed here
BY_STATUS: dict[str, type[VkformerError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        FileError,
        FormatError,
        UnsupportedError,
        OutOfMemoryError,
        NoVulkanError,
        NoDeviceError,
        VulkanError,
        ShaderError,
        TokenError,
        ContextFullError,
        ValidationError,
        InternalError,
        AbortedError,
    )
}
