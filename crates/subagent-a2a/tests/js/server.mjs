// The official A2A JavaScript SDK (@a2a-js/sdk) as a server for our client.
//
// Usage: node server.mjs [--grpc]
//
// Serves one echo agent on 127.0.0.1 (a free port) over JSON-RPC (/a2a/jsonrpc) and HTTP+JSON
// (/a2a/rest), its card at /.well-known/agent-card.json signed with a fresh P-256 key. Prints
// `LISTENING <base URL>` and `JWK <public key JSON>`, then serves until killed. The agent:
// `slow` works until cancelled; anything else gets the artifact `echo: <text>` and completes.
// With `--grpc` it also serves the SDK's gRPC service (`@a2a-js/sdk/server/grpc`, insecure, a
// free port), listed on the card as the GRPC interface, and prints `GRPC <host:port>` first.
import crypto from 'node:crypto';
import express from 'express';
import { AgentCard, TaskState, generateAgentCardSignature } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import * as grpc from '@grpc/grpc-js';
import { A2AService, UserBuilder as GrpcUserBuilder, grpcService } from '@a2a-js/sdk/server/grpc';

const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' });

class EchoExecutor {
  cancelled = new Set();
  contexts = new Map();

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    this.contexts.set(taskId, contextId);
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    const update = (state) => AgentEvent.statusUpdate({ taskId, contextId, status: status(state), metadata: undefined });
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: status(TaskState.TASK_STATE_SUBMITTED),
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    bus.publish(update(TaskState.TASK_STATE_WORKING));
    if (text === 'slow') {
      const deadline = Date.now() + 60000;
      while (!this.cancelled.has(taskId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      return; // cancelTask publishes the canceled status
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: 'echo', name: 'echo', description: '', parts: [textPart(`echo: ${text}`)], metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(update(TaskState.TASK_STATE_COMPLETED));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    this.cancelled.add(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: this.contexts.get(taskId) ?? '',
        status: status(TaskState.TASK_STATE_CANCELED),
        metadata: undefined,
      }),
    );
    bus.finished();
  }
}

const app = express();
const server = await new Promise((resolve) => {
  const s = app.listen(0, '127.0.0.1', () => resolve(s));
});
const base = `http://127.0.0.1:${server.address().port}`;

// --grpc: bind the gRPC port now, so the card can list it; the service is added below.
const grpcServer = process.argv.includes('--grpc') ? new grpc.Server() : undefined;
const grpcAddr = grpcServer
  ? `127.0.0.1:${await new Promise((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, port) =>
        e ? reject(e) : resolve(port),
      ),
    )}`
  : undefined;

const card = AgentCard.fromJSON({
  name: 'js-echo',
  description: 'Echoes text back (official JavaScript SDK)',
  version: '1.0.0',
  supportedInterfaces: [
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ...(grpcAddr ? [{ url: grpcAddr, protocolBinding: 'GRPC', protocolVersion: '1.0' }] : []),
  ],
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the text', tags: ['echo'] }],
});

const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'js-key-1' };
const signer = generateAgentCardSignature(privateKey, { alg: 'ES256', kid: 'js-key-1', typ: 'JOSE' });

const handler = new DefaultRequestHandler(
  card,
  new InMemoryTaskStore(),
  new EchoExecutor(),
  undefined,
  undefined,
  undefined,
  undefined,
  signer,
);
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

if (grpcServer) {
  grpcServer.addService(A2AService, grpcService({ requestHandler: handler, userBuilder: GrpcUserBuilder.noAuthentication }));
  console.log(`GRPC ${grpcAddr}`);
}
console.log(`LISTENING ${base}`);
console.log(`JWK ${JSON.stringify(jwk)}`);
