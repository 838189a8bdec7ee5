"""The voice routes: listing them, and with `--voice-upload` adding and deleting them.

`GET /v1/voices`; `POST /v1/voices` (multipart: `name`, `file`, optional `text`) and `DELETE /v1/voices/{name}`
(only voices added over HTTP: `f5lite.serve.voices`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from f5lite.serve.context import context_of
from f5lite.serve.errors import ApiError
from f5lite.serve.guard import VOICES
from f5lite.serve.voices import NotDeletableError, Voice, VoiceExistsError

router = APIRouter()


def _described(voice: Voice) -> dict[str, Any]:
    return {"name": voice.name, "text": voice.text.strip(), "seconds": round(voice.seconds, 2)}


@router.get(VOICES)
async def list_voices(request: Request) -> dict[str, Any]:
    """The voices, with their transcripts and lengths."""
    voices = context_of(request).voices
    found = [voices.get(name) for name in voices.names()]
    return {"voices": [_described(voice) for voice in found if voice]}


@router.post(VOICES)
async def add_voice(request: Request) -> dict[str, Any]:
    """Add a voice from an uploaded clip (the guard has refused it already when uploads are off)."""
    context = context_of(request)
    name, data, text = await _voice_form(request, context.settings.max_upload_bytes)
    try:
        voice = await asyncio.to_thread(context.voices.add, name, data, text)
    except VoiceExistsError as err:
        raise ApiError(409, str(err), param="name") from None
    except ValueError as err:
        message = str(err)
        param = "name" if "name" in message else "text" if "transcript" in message else "file"
        raise ApiError(400, message, param=param) from None
    return _described(voice)


@router.delete(VOICES + "/{name}")
async def delete_voice(name: str, request: Request) -> dict[str, Any]:
    """Delete a voice added over HTTP."""
    try:
        context_of(request).voices.remove(name)
    except KeyError:
        raise ApiError(404, f"unknown voice {name!r}", param="voice", code="voice_not_found") from None
    except NotDeletableError as err:
        raise ApiError(403, str(err), kind="permission_error", param="voice") from None
    return {"deleted": name}


async def _voice_form(request: Request, max_bytes: int) -> tuple[str, bytes, str | None]:
    """`name`, the clip's bytes and `text` of a voice upload (one file, two fields at most, the clip checked).

    Raises:
        ApiError: 400 a form that is not one, or lacks a part; 413 a clip over `max_bytes`.
    """
    try:
        form = await request.form(max_files=1, max_fields=2)
    except HTTPException as err:
        raise ApiError(400, f"the upload is not a valid form: {err.detail}", param="file") from None
    try:
        name, file, text = form.get("name"), form.get("file"), form.get("text")
        if not isinstance(name, str):
            raise ApiError(400, "name: give the voice's name as a form field", param="name")
        if not isinstance(file, UploadFile):
            raise ApiError(400, "file: give the clip as a file part", param="file")
        if text is not None and not isinstance(text, str):
            raise ApiError(400, "text: give the transcript as a form field", param="text")
        data = await file.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ApiError(413, f"the clip is larger than {max_bytes} bytes", param="file")
        return name, data, text
    finally:
        await form.close()
