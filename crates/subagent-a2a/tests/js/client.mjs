// The official A2A JavaScript SDK (@a2a-js/sdk) as a client of our server.
//
// Usage: node client.mjs BASE_URL BINDING [JWK]   (BINDING: JSONRPC, HTTP+JSON or GRPC)
//
// Discovers the agent from BASE_URL/.well-known/agent-card.json, then checks send, stream,
// get, cancel and push notifications (a webhook on 127.0.0.1 registered in the send
// configuration and with createTaskPushNotificationConfig receives our deliveries). With a
// public JWK, first verifies the card's signature with the SDK's verifier. Prints one
// `OK <check>` line per passed check; exits non-zero on the first failure.
import http from 'node:http';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { AgentCard, Role, TaskState, verifyAgentCardSignature } from '@a2a-js/sdk';

const [base, binding, jwkText] = process.argv.slice(2);

function fail(why) {
  console.error(`FAIL ${why}`);
  process.exit(1);
}

function message(text) {
  return {
    messageId: `js-${Math.random().toString(36).slice(2)}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(text, configuration) {
  return { tenant: '', message: message(text), configuration, metadata: undefined };
}

function artifactText(task) {
  return (task.artifacts ?? [])
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');
}

const stateName = (s) => TaskState[s] ?? String(s);

// A webhook receiver: remembers every POST (headers and JSON body).
const deliveries = [];
const waiters = [];
const hook = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    let json = null;
    try {
      json = JSON.parse(body);
    } catch {}
    deliveries.push({ headers: req.headers, body: json, text: body });
    res.writeHead(200).end();
    for (const w of waiters.splice(0)) w();
  });
});
await new Promise((r) => hook.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${hook.address().port}/hook`;

async function waitFor(pred, what) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const d = deliveries.find(pred);
    if (d) return d;
    if (Date.now() > deadline) fail(`no push delivery ${what} within 30 s (got ${deliveries.length}: ${deliveries.map((d) => d.text).join(' | ')})`);
    await new Promise((r) => {
      waiters.push(r);
      setTimeout(r, 500);
    });
  }
}

try {
  if (jwkText) {
    const jwk = JSON.parse(jwkText);
    const res = await fetch(`${base}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    const card = AgentCard.fromJSON(await res.json());
    const verify = verifyAgentCardSignature(async (kid) => {
      if (kid !== jwk.kid) throw new Error(`unknown kid ${kid}`);
      return jwk;
    });
    await verify(card);
    console.log(`OK signature verified (${card.signatures.length} signature(s))`);
    card.description += ' (altered)';
    let refused = false;
    try {
      await verify(card);
    } catch {
      refused = true;
    }
    if (!refused) fail('an altered card verified');
    console.log('OK altered card refused');
  }

  const extra = { preferredTransports: [binding] };
  if (binding === 'GRPC') {
    // The SDK's gRPC transport (peer dependencies @grpc/grpc-js and @bufbuild/protobuf),
    // plain HTTP/2 to the address the card lists.
    const grpc = await import('@grpc/grpc-js');
    const { GrpcTransportFactory } = await import('@a2a-js/sdk/client/grpc');
    extra.transports = [new GrpcTransportFactory({ grpcChannelCredentials: grpc.credentials.createInsecure() })];
  }
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, extra));
  // The card's full URL: the agent lives under a path (`createFromUrl(base)` would resolve the
  // well-known path against the base's parent).
  const client = await factory.createFromUrl(`${base}/.well-known/agent-card.json`, '');
  if (client.transport.protocolName !== binding) fail(`transport ${client.transport.protocolName}, wanted ${binding}`);

  // send (blocking)
  const sent = await client.sendMessage(request('hello'));
  if (!sent.status) fail(`send answered a message, not a task: ${JSON.stringify(sent)}`);
  if (sent.status.state !== TaskState.TASK_STATE_COMPLETED) fail(`send: state ${stateName(sent.status.state)}`);
  if (artifactText(sent) !== 'echo: hello') fail(`send: artifact ${artifactText(sent)}`);
  console.log(`OK send ${sent.id}`);

  // stream
  const kinds = [];
  let last = null;
  for await (const ev of client.sendMessageStream(request('streamed'))) {
    kinds.push(ev.payload?.$case);
    last = ev.payload;
  }
  if (!kinds.includes('artifactUpdate')) fail(`stream: no artifact update in ${kinds}`);
  const finalState = last?.$case === 'statusUpdate' ? last.value.status.state : last?.value?.status?.state;
  if (finalState !== TaskState.TASK_STATE_COMPLETED) fail(`stream: last event ${JSON.stringify(last)}`);
  console.log(`OK stream ${kinds.join(',')}`);

  // get
  const got = await client.getTask({ tenant: '', id: sent.id, historyLength: undefined });
  if (got.id !== sent.id || got.status.state !== TaskState.TASK_STATE_COMPLETED) fail(`get: ${JSON.stringify(got)}`);
  console.log(`OK get ${stateName(got.status.state)}`);

  // cancel: a slow task, started without waiting
  const slow = await client.sendMessage(
    request('slow', { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true }),
  );
  if (!slow.status) fail('slow send answered a message');
  // push: a config registered for the running task gets the cancellation
  const cfg = await client.createTaskPushNotificationConfig({
    tenant: '',
    id: '',
    taskId: slow.id,
    url: hookUrl,
    token: 'js-token-2',
    authentication: undefined,
  });
  if (cfg.taskId !== slow.id || cfg.url !== hookUrl) fail(`create push config: ${JSON.stringify(cfg)}`);
  const canceled = await client.cancelTask({ tenant: '', id: slow.id, metadata: undefined });
  if (canceled.status.state !== TaskState.TASK_STATE_CANCELED) fail(`cancel: ${stateName(canceled.status.state)}`);
  console.log(`OK cancel ${stateName(canceled.status.state)}`);
  await waitFor(
    (d) => d.headers['x-a2a-notification-token'] === 'js-token-2' && d.text.includes('TASK_STATE_CANCELED'),
    'of the cancellation',
  );
  console.log('OK push-created delivered cancel');

  // push: a config in the send configuration gets the completion
  const pushed = await client.sendMessage(
    request('pushed', {
      acceptedOutputModes: [],
      taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url: hookUrl, token: 'js-token-1', authentication: undefined },
      historyLength: undefined,
      returnImmediately: true,
    }),
  );
  const d = await waitFor(
    (d) => d.headers['x-a2a-notification-token'] === 'js-token-1' && d.text.includes(pushed.id) && d.text.includes('TASK_STATE_COMPLETED'),
    'of the completion',
  );
  console.log(`OK push-send delivered ${Object.keys(d.body ?? {}).join(',')}`);
} catch (e) {
  fail(e?.stack ?? String(e));
} finally {
  hook.close();
}
process.exit(0);
