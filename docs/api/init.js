// Swagger UI over this server's own OpenAPI document. "Try it out" calls go
// to the same origin, so a signed-in browser's session cookie goes with
// them; mutations also need the csrf key (Authorize), or use an API token.
window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  docExpansion: "none",
  defaultModelsExpandDepth: 0,
  validatorUrl: null,
});
