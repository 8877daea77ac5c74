"""GET /collections and GET /collections/{name}: what can be searched, with sizes and models."""

from __future__ import annotations

from fastapi import APIRouter

from workbench.api.dependencies import Authorised, State, run_bounded
from workbench.types import CollectionInfo

router = APIRouter(prefix="/collections", tags=["collections"], dependencies=Authorised)


@router.get("", response_model=list[CollectionInfo])
async def collections(state: State) -> list[CollectionInfo]:
    return await run_bounded(state, lambda: [info.public() for info in state.engine.collections()])


@router.get("/{name}", response_model=CollectionInfo)
async def collection(name: str, state: State) -> CollectionInfo:
    return await run_bounded(state, lambda: state.engine.collection_info(name).public())
