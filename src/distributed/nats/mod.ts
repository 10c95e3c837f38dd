/**
 * Ranks over NATS: the link a remote rank and the coordinator talk through (issue 10).
 * Browser-safe: no Deno API here; the server runner is
 * `scripts/nats_server.ts`.
 */
export { CAST_MISSED, CAST_WAIT_MS, Cast, CastInbox, CastSender } from "./cast.ts";
export { decodeValue, encodeValue } from "./codec.ts";
export { connectLink, maxPayloadOf } from "./connect.ts";
export type { NatsConnection } from "./connect.ts";
export {
  assignRelay,
  createRunCredentials,
  deriveCastKey,
  deriveRankKey,
  relayCredentials,
  serverAuthorization,
} from "./credentials.ts";
export type { NatsUser, RankCredentials, RelayCredentials, RunCredentials } from "./credentials.ts";
export { decodeJoinToken, decodeRelayToken, encodeJoinToken, serversOf } from "./join_token.ts";
export type { TokenServers } from "./join_token.ts";
export { openCoordinator } from "./coordinator_link.ts";
export type { CoordinatorLinkOptions, NatsCoordinator, RankLink, RankLinkListeners } from "./coordinator_link.ts";
export { RankLinkError } from "./errors.ts";
export type { RankLinkFault } from "./errors.ts";
export { checkFrame } from "./frame_checks.ts";
export type { FrameExpectation, FrameLike } from "./frame_checks.ts";
export { serveRank } from "./rank_link.ts";
export { remote } from "./remote.ts";
export type { Remote } from "./remote.ts";
export type { RankHandler, RankServeOptions, RankServer } from "./rank_link.ts";
export { castSubject, coordinatorInbox, fromRankSubject, relaySubject, toRankSubject } from "./subjects.ts";
export { importLinkKey, WireReceiver, WireSender } from "./wire.ts";
