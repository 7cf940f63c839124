//! Round trips of the wire types against JSON modelled on the examples of the A2A 1.0
//! specification (`docs/specification.md`, `specification/a2a.proto`) and of 0.3 (tag
//! `v0.3.0`), and conversions between the versions.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use subagent_a2a::types::jsonrpc::{self, RpcError, codes};
use subagent_a2a::types::{v1, v03};

/// Parses `value` as `T`, serializes it back and requires the identical JSON.
fn round_trip<T: Serialize + DeserializeOwned>(value: Value) -> T {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("parse failed: {e}\n{value:#}"));
    let back = serde_json::to_value(&typed).expect("serialize");
    assert_eq!(back, value, "round trip changed the JSON");
    typed
}

/// The skill both cards list (a skill has the same JSON in 0.3 and 1.0).
fn route_skill() -> Value {
    json!({
      "id": "route-optimizer-traffic",
      "name": "Traffic-Aware Route Optimizer",
      "description": "Calculates the optimal driving route between two or more locations.",
      "tags": ["maps", "routing"],
      "examples": ["Plan a route from A to B avoiding tolls."],
      "inputModes": ["application/json", "text/plain"],
      "outputModes": ["application/json", "application/vnd.geo+json"]
    })
}

fn v1_card() -> Value {
    json!({
      "name": "GeoSpatial Route Planner Agent",
      "description": "Provides advanced route planning, traffic analysis, and custom map generation services.",
      "supportedInterfaces": [
        {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        {"url": "https://georoute-agent.example.com/a2a/json", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
      ],
      "provider": {"url": "https://www.examplegeoservices.com", "organization": "Example Geo Services Inc."},
      "version": "1.2.0",
      "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
      "capabilities": {"streaming": true, "pushNotifications": true, "extendedAgentCard": true},
      "securitySchemes": {
        "google": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}},
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
        "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
        "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://auth.example.com/token", "scopes": {"read": "read access"}}}}},
        "mtls": {"mtlsSecurityScheme": {"description": "client certificates"}}
      },
      "securityRequirements": [{"schemes": {"google": {"list": ["openid", "profile", "email"]}}}],
      "defaultInputModes": ["application/json", "text/plain"],
      "defaultOutputModes": ["application/json", "image/png"],
      "skills": [route_skill()],
      "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "QFdkNLNszlGj3z3u0YQGt"}],
      "iconUrl": "https://georoute-agent.example.com/icon.png"
    })
}

#[test]
fn v1_agent_card_round_trips_exactly() {
    let card: v1::AgentCard = round_trip(v1_card());
    assert_eq!(card.supported_interfaces.len(), 3);
    assert_eq!(card.capabilities.streaming, Some(true));
    assert!(matches!(
        card.security_schemes.get("bearer"),
        Some(v1::SecurityScheme::HttpAuthSecurityScheme(h)) if h.scheme == "Bearer"
    ));
}

#[test]
fn a_minimal_v1_card_serializes_only_its_required_fields() {
    let card = v1::AgentCard {
        name: "echo".into(),
        description: "Echoes.".into(),
        supported_interfaces: vec![v1::AgentInterface {
            url: "http://127.0.0.1:1/".into(),
            protocol_binding: "JSONRPC".into(),
            tenant: None,
            protocol_version: "1.0".into(),
        }],
        provider: None,
        version: "0.1.0".into(),
        documentation_url: None,
        capabilities: v1::AgentCapabilities::default(),
        security_schemes: Default::default(),
        security_requirements: vec![],
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![],
        signatures: vec![],
        icon_url: None,
    };
    let v = serde_json::to_value(&card).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "description",
            "name",
            "skills",
            "supportedInterfaces",
            "version"
        ]
    );
    assert_eq!(v["capabilities"], json!({}));
    assert_eq!(
        v["supportedInterfaces"][0],
        json!({"url": "http://127.0.0.1:1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
    );
}

#[test]
fn v1_send_message_request_with_file_parts_round_trips() {
    let req: v1::SendMessageRequest = round_trip(json!({
      "message": {
        "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6",
        "role": "ROLE_USER",
        "parts": [
          {"text": "Analyze this image and highlight any faces."},
          {"raw": "iVBORw0KGgoAAAANSUhEUgAAAAUA", "filename": "input_image.png", "mediaType": "image/png"},
          {"data": {"ticket": 1}, "metadata": {"schema": "x"}}
        ]
      },
      "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 5, "returnImmediately": true}
    }));
    assert_eq!(req.message.role, v1::Role::User);
    assert!(matches!(
        req.message.parts[1].content,
        v1::PartContent::Raw(_)
    ));
    assert!(req.configuration.unwrap().return_immediately);
}

#[test]
fn v1_task_results_round_trip() {
    // Completed with a URL artifact (6.7).
    let r: v1::SendMessageResponse = round_trip(json!({
      "task": {
        "id": "43667960-d455-4453-b0cf-1bae4955270d",
        "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T12:05:00Z"},
        "artifacts": [{
          "artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1",
          "name": "processed_image_with_faces.png",
          "parts": [{"url": "https://storage.example.com/processed/output.png?token=xyz", "filename": "output.png", "mediaType": "image/png"}]
        }]
      }
    }));
    assert!(
        matches!(r, v1::SendMessageResponse::Task(t) if t.status.state == v1::TaskState::Completed)
    );

    // Input required (6.3).
    let r: v1::SendMessageResponse = round_trip(json!({
      "task": {
        "id": "task-uuid",
        "status": {
          "state": "TASK_STATE_INPUT_REQUIRED",
          "message": {"messageId": "m-9", "role": "ROLE_AGENT", "parts": [{"text": "Where would you like to fly from and to?"}]}
        }
      }
    }));
    let v1::SendMessageResponse::Task(t) = r else {
        panic!("a task")
    };
    assert!(t.status.state.is_interrupted());

    // A direct message.
    let r: v1::SendMessageResponse = round_trip(json!({
      "message": {"messageId": "m-1", "contextId": "c-1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}
    }));
    assert!(matches!(r, v1::SendMessageResponse::Message(m) if m.role == v1::Role::Agent));
}

#[test]
fn v1_stream_responses_round_trip() {
    let events = [
        json!({"task": {"id": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "artifact": {"artifactId": "a1", "parts": [{"text": "# Climate Change Report\n\n"}]}, "append": true, "lastChunk": true}}),
        json!({"statusUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}}),
    ];
    let parsed: Vec<v1::StreamResponse> = events.into_iter().map(round_trip).collect();
    assert!(
        matches!(parsed[1], v1::StreamResponse::ArtifactUpdate(ref a) if a.append && a.last_chunk)
    );
}

#[test]
fn v1_lenient_input_omits_nothing_required_on_output() {
    // The spec's streaming example leaves out artifactId; ProtoJSON peers may send numbers for
    // enums. Both parse.
    let e: v1::StreamResponse = serde_json::from_value(json!(
        {"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"parts": [{"text": "x"}]}}}
    ))
    .unwrap();
    assert!(
        matches!(e, v1::StreamResponse::ArtifactUpdate(a) if a.artifact.artifact_id.is_empty())
    );
    // Unknown fields are ignored (forward compatibility), also inside parts.
    let p: v1::Part =
        serde_json::from_value(json!({"text": "x", "futureField": 1, "mediaType": "text/plain"}))
            .unwrap();
    assert_eq!(p.as_text(), Some("x"));
    assert_eq!(p.media_type.as_deref(), Some("text/plain"));
    let none = serde_json::from_value::<v1::Part>(json!({"mediaType": "text/plain"}));
    assert!(none.is_err(), "a part needs one of text/raw/url/data");
    let s: v1::TaskStatus = serde_json::from_value(json!({"state": 3})).unwrap();
    assert_eq!(s.state, v1::TaskState::Completed);
    assert_eq!(
        serde_json::to_value(s).unwrap(),
        json!({"state": "TASK_STATE_COMPLETED"})
    );
    let bad = serde_json::from_value::<v1::TaskStatus>(json!({"state": "completed"}));
    assert!(
        bad.unwrap_err()
            .to_string()
            .contains("unknown TaskState `completed`")
    );
}

#[test]
fn v1_requests_round_trip() {
    let _: v1::GetTaskRequest = round_trip(json!({"id": "task-uuid", "historyLength": 10}));
    let l: v1::ListTasksRequest = round_trip(json!({
        "contextId": "context-uuid", "status": "TASK_STATE_WORKING", "pageSize": 50, "pageToken": "cursor-token"
    }));
    assert_eq!(l.status, Some(v1::TaskState::Working));
    let _: v1::ListTasksResponse = round_trip(json!({
        "tasks": [{"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}],
        "nextPageToken": "", "pageSize": 50, "totalSize": 1
    }));
    let _: v1::CancelTaskRequest = round_trip(json!({"id": "task-uuid"}));
    let _: v1::SubscribeToTaskRequest = round_trip(json!({"id": "task-uuid", "tenant": "acme"}));
    let _: v1::TaskPushNotificationConfig = round_trip(json!({
        "taskId": "t", "id": "cfg", "url": "https://client.example.com/webhook",
        "token": "secure-client-token", "authentication": {"scheme": "Bearer", "credentials": "abc"}
    }));
}

#[test]
fn jsonrpc_envelopes_and_errors_round_trip() {
    let req: jsonrpc::Request<v1::GetTaskRequest> = round_trip(json!(
        {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "task-uuid", "historyLength": 10}}
    ));
    assert_eq!(req.method, v1::methods::GET_TASK);
    let resp: jsonrpc::Response<Value> = round_trip(json!({
      "jsonrpc": "2.0", "id": 2,
      "error": {
        "code": -32001, "message": "Task not found",
        "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                  "domain": "a2a-protocol.org", "metadata": {"taskId": "nonexistent-task-id"}}]
      }
    }));
    let err: RpcError = resp.into_result().unwrap_err();
    assert_eq!(err.code, codes::TASK_NOT_FOUND);
    let mut meta = serde_json::Map::new();
    meta.insert("taskId".into(), "nonexistent-task-id".into());
    let built = jsonrpc::a2a_error(codes::TASK_NOT_FOUND, "Task not found", Some(meta));
    assert_eq!(built, err);
    let _: jsonrpc::Response<v03::Event> = round_trip(json!(
        {"jsonrpc": "2.0", "id": "req-1", "result": {"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "hi"}]}}
    ));
}

fn v03_card() -> Value {
    json!({
      "protocolVersion": "0.3.0",
      "name": "GeoSpatial Route Planner Agent",
      "description": "Provides advanced route planning.",
      "url": "https://georoute-agent.example.com/a2a/v1",
      "preferredTransport": "JSONRPC",
      "additionalInterfaces": [
        {"url": "https://georoute-agent.example.com/a2a/v1", "transport": "JSONRPC"},
        {"url": "https://georoute-agent.example.com/a2a/grpc", "transport": "GRPC"},
        {"url": "https://georoute-agent.example.com/a2a/json", "transport": "HTTP+JSON"}
      ],
      "provider": {"organization": "Example Geo Services Inc.", "url": "https://www.examplegeoservices.com"},
      "iconUrl": "https://georoute-agent.example.com/icon.png",
      "version": "1.2.0",
      "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
      "capabilities": {"streaming": true, "pushNotifications": true, "stateTransitionHistory": false},
      "securitySchemes": {
        "google": {"type": "openIdConnect", "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"},
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        "oauth": {"type": "oauth2", "flows": {"authorizationCode": {"authorizationUrl": "https://a/authorize", "tokenUrl": "https://a/token", "scopes": {"read": "r"}}}},
        "mtls": {"type": "mutualTLS"}
      },
      "security": [{"google": ["openid", "profile", "email"]}],
      "defaultInputModes": ["application/json", "text/plain"],
      "defaultOutputModes": ["application/json", "image/png"],
      "skills": [route_skill()],
      "supportsAuthenticatedExtendedCard": true,
      "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "QFdkNLNszlGj3z3u0YQGt"}]
    })
}

#[test]
fn v03_agent_card_round_trips_exactly() {
    let card: v03::AgentCard = round_trip(v03_card());
    assert_eq!(card.preferred_transport.as_deref(), Some("JSONRPC"));
    assert!(matches!(
        card.security_schemes.get("key"),
        Some(v03::SecurityScheme::ApiKey { location, .. }) if location == "header"
    ));
}

#[test]
fn v03_stream_events_round_trip() {
    let events = [
        json!({
          "id": "225d6247-06ba-4cda-a08b-33ae35c8dcfa",
          "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1",
          "status": {"state": "submitted", "timestamp": "2025-04-02T16:59:25.331844"},
          "history": [{
            "role": "user",
            "parts": [
              {"kind": "text", "text": "write a long paper describing the attached pictures"},
              {"kind": "file", "file": {"mimeType": "image/png", "bytes": "aGVsbG8="}}
            ],
            "messageId": "bbb7dee1-cf5c-4683-8a6f-4114529da5eb",
            "taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa",
            "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1",
            "kind": "message"
          }],
          "kind": "task",
          "metadata": {}
        }),
        json!({
          "taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa",
          "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1",
          "artifact": {"artifactId": "9b6934dd", "parts": [{"kind": "text", "text": "<section 1...>"}]},
          "append": false, "lastChunk": false, "kind": "artifact-update"
        }),
        json!({
          "taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa",
          "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1",
          "status": {"state": "input-required", "message": {"kind": "message", "messageId": "q", "role": "agent", "parts": [{"kind": "data", "data": {"need": "dates"}}]}},
          "final": true, "kind": "status-update"
        }),
    ];
    let parsed: Vec<v03::Event> = events.into_iter().map(round_trip).collect();
    assert!(
        matches!(&parsed[0], v03::Event::Task(t) if t.status.state == v03::TaskState::Submitted)
    );
    assert!(matches!(&parsed[2], v03::Event::StatusUpdate(s) if s.is_final));
    let unknown = serde_json::from_value::<v03::Event>(json!({"kind": "nope"}));
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("unknown 0.3 event kind `nope`")
    );
}

#[test]
fn v03_requests_round_trip() {
    let req: jsonrpc::Request<v03::MessageSendParams> = round_trip(json!({
      "jsonrpc": "2.0", "id": 1, "method": "message/send",
      "params": {
        "message": {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": "tell me a joke"}], "messageId": "9229e770"},
        "configuration": {"acceptedOutputModes": ["text/plain"], "blocking": true, "historyLength": 2,
                          "pushNotificationConfig": {"url": "https://client.example.com/hook", "token": "t",
                                                     "authentication": {"schemes": ["Bearer"]}}},
        "metadata": {}
      }
    }));
    assert_eq!(req.method, v03::methods::MESSAGE_SEND);
    let _: v03::TaskQueryParams = round_trip(json!({"id": "t", "historyLength": 3}));
    let _: v03::TaskIdParams = round_trip(json!({"id": "t"}));
    let _: v03::TaskPushNotificationConfig = round_trip(json!(
        {"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://h"}}
    ));
    let _: v03::TaskPushNotificationConfigParams =
        round_trip(json!({"id": "t", "pushNotificationConfigId": "c"}));
}

#[test]
fn every_state_maps_both_ways() {
    for s in v1::TaskState::ALL {
        let old: v03::TaskState = (*s).into();
        assert_eq!(v1::TaskState::from(old), *s);
        assert_eq!(old.is_terminal(), s.is_terminal());
    }
    let names: Vec<Value> = v1::TaskState::ALL
        .iter()
        .map(|s| serde_json::to_value(v03::TaskState::from(*s)).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "unknown",
            "submitted",
            "working",
            "completed",
            "failed",
            "canceled",
            "input-required",
            "rejected",
            "auth-required"
        ]
    );
}

#[test]
fn tasks_convert_both_ways_without_loss() {
    let task: v1::Task = serde_json::from_value(json!({
      "id": "t", "contextId": "c",
      "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2025-01-01T00:00:00Z",
                 "message": {"messageId": "q", "role": "ROLE_AGENT", "parts": [{"text": "which city?"}]}},
      "artifacts": [{"artifactId": "a", "name": "n", "parts": [
          {"text": "t", "metadata": {"k": 1}},
          {"raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
          {"url": "https://x/y", "mediaType": "image/png"},
          {"data": {"obj": true}},
          {"data": [1, 2, 3]},
          {"data": "just a string", "metadata": {"m": "x"}}
      ]}],
      "history": [{"messageId": "u", "role": "ROLE_USER", "parts": [{"text": "book"}], "referenceTaskIds": ["t0"]}],
      "metadata": {"origin": "test"}
    }))
    .unwrap();
    let old: v03::Task = task.clone().into();
    let old_json = serde_json::to_value(&old).unwrap();
    assert_eq!(old_json["kind"], "task");
    assert_eq!(old_json["status"]["state"], "input-required");
    assert_eq!(old_json["artifacts"][0]["parts"][1]["kind"], "file");
    assert_eq!(
        old_json["artifacts"][0]["parts"][1]["file"]["bytes"],
        "aGk="
    );
    assert_eq!(
        old_json["artifacts"][0]["parts"][1]["file"]["name"],
        "hi.txt"
    );
    assert_eq!(
        old_json["artifacts"][0]["parts"][4]["data"],
        json!({"value": [1, 2, 3]})
    );
    assert_eq!(
        old_json["artifacts"][0]["parts"][4]["metadata"]["data_part_compat"],
        true
    );
    let back: v1::Task = serde_json::from_value::<v03::Task>(old_json)
        .unwrap()
        .into();
    assert_eq!(back, task);
}

#[test]
fn cards_convert_both_ways() {
    let old: v03::AgentCard = serde_json::from_value(v03_card()).unwrap();
    let new: v1::AgentCard = old.clone().into();
    assert_eq!(new.supported_interfaces[0].protocol_binding, "JSONRPC");
    assert_eq!(new.supported_interfaces[0].protocol_version, "0.3.0");
    assert_eq!(
        new.supported_interfaces.len(),
        3,
        "the repeated main interface is merged"
    );
    assert_eq!(new.capabilities.extended_agent_card, Some(true));
    assert_eq!(
        new.security_requirements[0].schemes["google"].list,
        ["openid", "profile", "email"]
    );
    let again: v03::AgentCard = new.into();
    // stateTransitionHistory has no 1.0 counterpart; everything else survives.
    let mut expected = old;
    expected.capabilities.state_transition_history = None;
    assert_eq!(again, expected);

    let new: v1::AgentCard = serde_json::from_value(v1_card()).unwrap();
    let old: v03::AgentCard = new.clone().into();
    assert_eq!(old.url, "https://georoute-agent.example.com/a2a/v1");
    assert_eq!(old.preferred_transport.as_deref(), Some("JSONRPC"));
    assert_eq!(old.protocol_version, "0.3.0");
    assert_eq!(old.additional_interfaces.len(), 3);
    assert_eq!(old.supports_authenticated_extended_card, Some(true));
    let v = serde_json::to_value(&old).unwrap();
    assert_eq!(
        v["securitySchemes"]["key"],
        json!({"type": "apiKey", "in": "header", "name": "X-API-Key"})
    );
    assert_eq!(
        v["security"],
        json!([{"google": ["openid", "profile", "email"]}])
    );
}

#[test]
fn send_params_convert_blocking_and_push_config() {
    let mut req = v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        "m",
        vec![v1::Part::text("hi")],
    ));
    req.configuration = Some(v1::SendMessageConfiguration {
        return_immediately: true,
        task_push_notification_config: Some(v1::TaskPushNotificationConfig {
            tenant: None,
            id: Some("c".into()),
            task_id: None,
            url: "https://h".into(),
            token: None,
            authentication: Some(v1::AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: None,
            }),
        }),
        ..Default::default()
    });
    let old: v03::MessageSendParams = req.clone().into();
    let v = serde_json::to_value(&old).unwrap();
    assert_eq!(v["configuration"]["blocking"], false);
    assert_eq!(
        v["configuration"]["pushNotificationConfig"]["authentication"]["schemes"],
        json!(["Bearer"])
    );
    assert_eq!(v["message"]["kind"], "message");
    assert_eq!(v["message"]["role"], "user");
    let back: v1::SendMessageRequest = old.into();
    assert_eq!(back, req);
}

#[test]
fn parts_hold_exactly_one_content_and_read_protojson_spellings() {
    // Every content kind, with the optional fields, round trips in the canonical order.
    for part in [
        json!({"text": "hi", "metadata": {"k": 1}, "mediaType": "text/markdown"}),
        json!({"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain"}),
        json!({"url": "https://example.com/a.png", "filename": "a.png"}),
        json!({"data": {"rows": [1, 2]}}),
    ] {
        round_trip::<v1::Part>(part);
    }
    // ProtoJSON's field name, unknown fields skipped, and `null` read as an absent field.
    let p: v1::Part = serde_json::from_value(
        json!({"media_type": "text/csv", "future": {"x": [1]}, "url": null, "text": "a,b"}),
    )
    .expect("lenient part");
    assert_eq!(p.as_text(), Some("a,b"));
    assert_eq!(p.media_type.as_deref(), Some("text/csv"));
    // Wrong shapes are errors that say what a part needs.
    let none = serde_json::from_value::<v1::Part>(json!({"mediaType": "text/plain"}))
        .expect_err("no content");
    assert!(
        none.to_string().contains("`text`, `raw`, `url` or `data`"),
        "{none}"
    );
    let two = serde_json::from_value::<v1::Part>(json!({"text": "a", "url": "https://x"}))
        .expect_err("two contents");
    assert!(two.to_string().contains("not several"), "{two}");
    let typed = serde_json::from_value::<v1::Part>(json!({"text": 5})).expect_err("text: 5");
    assert!(typed.to_string().contains("invalid type"), "{typed}");
    assert!(serde_json::from_value::<v1::Part>(json!(["text", "a"])).is_err());
}
