// /docs: Swagger UI over this server's /openapi.json. A file, not an inline script, so the page's
// Content-Security-Policy can allow scripts from this server only; no validator badge (another site).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
