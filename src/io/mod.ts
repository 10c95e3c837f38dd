export { bytesOf, checkPath, FsStorage, MemoryStorage, NotFoundError } from "./storage.ts";
export type { FileStore } from "./storage.ts";
export { defaultStorage, OpfsStorage, resolveStorage } from "./opfs.ts";
export { downloadBytes, MAX_TAR_ENTRY_BYTES, packTar, pickFile, unpackTar } from "./archive.ts";
export type { ArchiveEntry, PackOptions } from "./archive.ts";
export {
  decodeSafetensors,
  encodeSafetensors,
  int64ToNumbers,
  MAX_HEADER_BYTES,
  parseSafetensorsHeader,
  safetensorsHeaderBytes,
  toBf16Bits,
  toFloat32,
} from "./safetensors.ts";
export type { DecodedSafetensors, SafeTensor, SafetensorsDType, SafetensorsEntry, SafetensorsHeader } from "./safetensors.ts";
export { decodeOptimState, encodeOptimState, OPTIM_KIND } from "./optim_state.ts";
export type { HostOptimState } from "./optim_state.ts";
export { decodeModelFile, encodeModelFile, positionalMetadata } from "./model_file.ts";
export type { HostModel, HostTensor, ModelFileKind } from "./model_file.ts";
export { openRangedFile, openRangedUrl, rangedBytes } from "./ranged.ts";
export type { RangedFile } from "./ranged.ts";
export { createStageFile } from "./stage_file.ts";
export type { StageFile } from "./stage_file.ts";
