// Validates an OpenAPI document against the official OpenAPI JSON schemas
// (@seriousme/openapi-schema-validator, offline: the schemas ship in the
// package) and checks that every local $ref resolves.
// Usage: node docs/api/validate.mjs docs/openapi.json
// Exit 0 and "valid OpenAPI 3.1" when it is; 1 with the errors when not.
import { Validator } from "@seriousme/openapi-schema-validator";

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate.mjs OPENAPI.json");
  process.exit(2);
}
const validator = new Validator();
const res = await validator.validate(file);
if (!res.valid) {
  console.log(JSON.stringify(res.errors, null, 2));
  process.exit(1);
}
// A $ref to a component that does not exist is valid to the schema; resolving
// every reference finds it.
try {
  validator.resolveRefs();
} catch (e) {
  console.log(`unresolved reference: ${e.message}`);
  process.exit(1);
}
console.log(`valid OpenAPI ${validator.version}`);
