// The console's OpenAPI viewer (README "Admin console"): Swagger UI (swagger-ui-dist, served by the
// gateway) on the deployment's /openapi.json. No request leaves the gateway's origin.
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: false,
  validatorUrl: null,
  tryItOutEnabled: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
})
