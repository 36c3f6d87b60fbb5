import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "../management/client";

/*
 * A GraphQL refusal of a variable must not send back the secrets around the bad field: graphql-js
 * words it with the whole input object, and callers log error messages (CI output, Pulumi's).
 */
const PASSWORD = "registry_pw_SECRET_8e7d6c";
const ENV_VALUE = "hf_env_SECRET_1a2b3c";

let service: TestService;
beforeAll(async () => {
  service = await withService();
});
afterAll(() => service?.close());

type Errors = { errors?: { message: string; extensions?: { code: string } }[] };

describe("GraphQL refusals of variables", () => {
  it("an unknown field beside a registry password: named, the password not echoed", async () => {
    const reply = await clients(service).gql<Errors>(
      "mutation S($input: SaveRegistryAuthInput!) { saveRegistryAuth(input: $input) { id } }",
      { input: { name: "echo-check", username: "me", password: PASSWORD, passwrd: "typo" } },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.errors).toHaveLength(1);
    const [error] = reply.body.errors ?? [];
    expect(error?.extensions?.code).toBe("GRAPHQL_VALIDATION");
    expect(error?.message).toContain('Variable "$input"');
    expect(error?.message).toContain('Field "passwrd" is not defined by type "SaveRegistryAuthInput"');
    expect(reply.text).not.toContain(PASSWORD);
  });

  it("an unknown field in a template env item: its path is named, no env value echoed", async () => {
    const reply = await clients(service).gql<Errors>(
      "mutation T($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }",
      {
        input: {
          name: "echo-check",
          imageName: "runpodkit/echo",
          isServerless: true,
          containerDiskInGb: 5,
          volumeInGb: 0,
          dockerArgs: "",
          env: [{ key: "HF_TOKEN", value: ENV_VALUE, secret: true }],
        },
      },
    );
    const [error] = reply.body.errors ?? [];
    expect(error?.extensions?.code).toBe("GRAPHQL_VALIDATION");
    expect(error?.message).toContain('at "input.env[0]"');
    expect(error?.message).toContain('Field "secret" is not defined by type "EnvironmentVariableInput"');
    expect(reply.text).not.toContain(ENV_VALUE);
  });
});
