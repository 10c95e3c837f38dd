export { bytesOf, checkPath, FsStorage, MemoryStorage, NotFoundError } from "./storage.ts";
export type { Storage } from "./storage.ts";
